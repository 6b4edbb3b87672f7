import unittest

from sales import total_for


class TotalForTest(unittest.TestCase):
    def test_north(self):
        self.assertAlmostEqual(total_for("sales.csv", "north"), 200.0)

    def test_south(self):
        self.assertAlmostEqual(total_for("sales.csv", "south"), 100.0)

    def test_unknown_region(self):
        self.assertAlmostEqual(total_for("sales.csv", "west"), 0)


if __name__ == "__main__":
    unittest.main()
