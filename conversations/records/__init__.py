"""What is kept of a conversation: each turn answered and written down, summaries for later conversations,
and erasure of a customer's data."""
