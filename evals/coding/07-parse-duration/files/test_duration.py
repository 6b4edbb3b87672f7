import unittest

from duration import parse_duration


class ParseDurationTest(unittest.TestCase):
    def test_one_unit(self):
        self.assertEqual(parse_duration("45s"), 45)
        self.assertEqual(parse_duration("2h"), 7200)
        self.assertEqual(parse_duration("5m"), 300)

    def test_units_together(self):
        self.assertEqual(parse_duration("1h30m"), 5400)
        self.assertEqual(parse_duration("1h2m3s"), 3723)
        self.assertEqual(parse_duration("10m15s"), 615)

    def test_malformed(self):
        for text in ["", "abc", "5x", "10", "h"]:
            with self.assertRaises(ValueError, msg=text):
                parse_duration(text)


if __name__ == "__main__":
    unittest.main()
