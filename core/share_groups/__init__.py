"""KIP-932 share groups: members, assignments, sessions, acknowledgements, offsets admin, switch delays."""
