from orders import order_total


def render(customer, lines):
    """A one-line invoice summary."""
    return f"{customer}: {len(lines)} lines, total {order_total(lines):.2f}"
