def average(numbers):
    """The mean of a list of numbers; 0.0 for an empty list."""
    return sum(numbers) / len(numbers)


def spread(numbers):
    """The largest number minus the smallest; 0 for an empty list."""
    if not numbers:
        return 0
    return max(numbers) - min(numbers)
