"""How a reply is made, from the customer's words to what is shipped: plain typed functions over dataclasses
that read the help centre and the verified customer's records and never the conversation's (see `pipeline`)."""
