def parse_duration(text):
    """The number of seconds in a duration such as "45s", "2h", "1h30m" or "1h2m3s".

    Hours (h), minutes (m) and seconds (s) come in that order, each at most once, each a
    whole number. Raise ValueError for anything else, e.g. "", "abc", "5x" or "10".
    """
    raise NotImplementedError
