def page(items, number, size):
    """The items on page `number` (counted from 1) when `size` items fit on a page."""
    start = (number - 1) * size
    return items[start:start + size]


def page_count(items, size):
    """How many pages the items fill."""
    return (len(items) + size - 1) // size
