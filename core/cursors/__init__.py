"""Subscriptions' cursors (mark-delete position, acked ranges, in-flight records, delivery counts),
the commands that change them and the subscription-mode protocol plugins implement."""
