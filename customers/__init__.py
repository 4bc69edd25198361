"""The shop's verified customers as loaded from its systems: customers, orders, facts and the tokens that vouch for
them."""
