import unittest

from mathutil import clamp


class ClampTest(unittest.TestCase):
    def test_inside(self):
        self.assertEqual(clamp(5, 1, 10), 5)

    def test_below(self):
        self.assertEqual(clamp(-3, 0, 7), 0)

    def test_above(self):
        self.assertEqual(clamp(12, 0, 7), 7)

    def test_edges(self):
        self.assertEqual(clamp(0, 0, 7), 0)
        self.assertEqual(clamp(7, 0, 7), 7)

    def test_floats(self):
        self.assertEqual(clamp(2.5, 0.0, 1.0), 1.0)


if __name__ == "__main__":
    unittest.main()
