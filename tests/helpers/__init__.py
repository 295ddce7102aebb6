"""What the tests share: real services on loopback, the role stack, and waiting for state."""
