def calc_total(lines):
    """The sum of quantity * unit price over (name, quantity, unit_price) lines."""
    return sum(quantity * price for _name, quantity, price in lines)
