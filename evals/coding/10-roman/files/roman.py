def to_roman(number):
    """The Roman numeral for a whole number from 1 to 3999, e.g. 1994 -> "MCMXCIV"."""
    raise NotImplementedError
