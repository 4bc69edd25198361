"""What only a verified customer gets: their orders and facts as evidence, and refunds the gatekeeper certifies."""
