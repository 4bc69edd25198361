"""Every claim of a draft checked against the passages it cites, before anything is shipped."""
