"""C1: a four-block character-level GPT trained correctly and with four silent bugs."""
