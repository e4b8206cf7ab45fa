"""Reading and measuring a history: validation and pairing (`analysis`), the change guard and a history
grown from the last one read (`history`), the state a judge is sent and token counting (`state`)."""
