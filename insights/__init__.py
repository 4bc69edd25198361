"""What staff and authors learn from the conversations: outcome analytics and content gaps."""
