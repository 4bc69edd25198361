"""The replies answering says in its own words: "I don't know", a hand-off, sign in first, and the refund
gatekeeper's answers."""

ABSTAIN_REPLY = (
    "I'm sorry, I don't have that information in our help centre, so I don't want to guess. "
    "Would you like me to pass your question to a member of our team?"
)
SIGN_IN_REPLY = (
    "I can only look up an order for a signed-in customer. Please sign in on our website and open this chat "
    "again, and I'll check it for you."
)
ORDER_NOT_FOUND_REPLY = (
    "I can't find order {numbers} on your account. Please check the number in your order confirmation email; "
    "if it's right, I can pass this to a member of our team."
)
REFUND_APPROVED_REPLY = (
    "I've approved a refund of ${amount} for order #{number}. You'll receive a \"Refund approved\" email with "
    "the amount."
)
REFUND_REFERRED_REPLY = (
    "I've passed your refund request for order #{number} to a member of our team, who will reply here. "
    "I can't approve it myself because {reason}."
)
REFER_REPLY = (
    "I want to be sure you get an accurate answer, so I've passed your question to a member of our team. "
    "They will reply here as soon as they can."
)
