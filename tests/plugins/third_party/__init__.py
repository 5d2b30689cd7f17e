"""A plugin written as a third party would write it, with its own tests (`logwright.testing` fixtures only)."""
