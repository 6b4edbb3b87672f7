import re


def slugify(title):
    """A URL slug for a title: lowercase words joined by single hyphens."""
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))
