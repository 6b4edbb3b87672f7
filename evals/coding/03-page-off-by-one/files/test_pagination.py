import unittest

from pagination import page, page_count

ITEMS = list("abcdefghij")


class PageTest(unittest.TestCase):
    def test_first_page(self):
        self.assertEqual(page(ITEMS, 1, 3), ["a", "b", "c"])

    def test_second_page(self):
        self.assertEqual(page(ITEMS, 2, 3), ["d", "e", "f"])

    def test_last_page_is_short(self):
        self.assertEqual(page(ITEMS, 4, 3), ["j"])

    def test_past_the_end(self):
        self.assertEqual(page(ITEMS, 5, 3), [])

    def test_page_count(self):
        self.assertEqual(page_count(ITEMS, 3), 4)


if __name__ == "__main__":
    unittest.main()
