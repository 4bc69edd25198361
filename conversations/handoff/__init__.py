"""How a conversation reaches a person: the customer asks or a turn refers, staff are assigned by presence
and business hours, reply (by e-mail too) and hand back."""
