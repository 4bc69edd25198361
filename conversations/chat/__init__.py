"""How a customer's message arrives and the reply goes back: the websocket, its frames, the stored message,
the queue of turns, the events to everyone watching, and thumbs on a reply."""
