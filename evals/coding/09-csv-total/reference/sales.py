import csv


def total_for(path, region):
    """The sum of the amount column over the rows whose region equals region."""
    with open(path, newline="") as f:
        return sum(float(row["amount"]) for row in csv.DictReader(f) if row["region"] == region)
