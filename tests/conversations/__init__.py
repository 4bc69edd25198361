"""Tests of conversations: the chat, the hand-off, the records and the staff pages."""
