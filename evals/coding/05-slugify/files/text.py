def slugify(title):
    """A URL slug for a title: lowercase words joined by single hyphens."""
    return title.lower()
