"""The evidence for a question: the passages retrieved and the trust-labelled context built from them."""
