from orders import calc_total


def render(customer, lines):
    """A one-line invoice summary."""
    return f"{customer}: {len(lines)} lines, total {calc_total(lines):.2f}"
