import unittest

from temperature import c_to_f, f_to_c


class TemperatureTest(unittest.TestCase):
    def test_freezing(self):
        self.assertAlmostEqual(c_to_f(0), 32.0)
        self.assertAlmostEqual(f_to_c(32), 0.0)

    def test_boiling(self):
        self.assertAlmostEqual(c_to_f(100), 212.0)
        self.assertAlmostEqual(f_to_c(212), 100.0)

    def test_body(self):
        self.assertAlmostEqual(c_to_f(37), 98.6)

    def test_round_trip(self):
        self.assertAlmostEqual(f_to_c(c_to_f(-40)), -40.0)


if __name__ == "__main__":
    unittest.main()
