import re


def parse_duration(text):
    """The number of seconds in a duration such as "45s", "2h", "1h30m" or "1h2m3s"."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or m is None:
        raise ValueError(f"not a duration: {text!r}")
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    return h * 3600 + mi * 60 + s
