def clamp(value, low, high):
    """Return value limited to the range from low to high."""
    return max(low, min(value, high))
