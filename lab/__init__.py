"""The evaluation lab, apart from the product: quality and speed measured on labelled sets and benchmarks."""
