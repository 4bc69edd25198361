"""The conversations the product carries: the chat, the hand-off to a person, and the records of each turn;
answering makes the replies."""
