def total_for(path, region):
    """The sum of the amount column over the rows of the CSV file at path whose region
    column equals region (0 when there are none)."""
    raise NotImplementedError
