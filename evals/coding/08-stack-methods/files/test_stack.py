import unittest

from stack import Stack


class StackTest(unittest.TestCase):
    def test_peek_shows_the_top(self):
        s = Stack()
        s.push(1)
        s.push(2)
        self.assertEqual(s.peek(), 2)
        self.assertEqual(s.pop(), 2)
        self.assertEqual(s.peek(), 1)

    def test_peek_on_empty(self):
        with self.assertRaises(IndexError):
            Stack().peek()

    def test_is_empty(self):
        s = Stack()
        self.assertTrue(s.is_empty())
        s.push("x")
        self.assertFalse(s.is_empty())
        s.pop()
        self.assertTrue(s.is_empty())


if __name__ == "__main__":
    unittest.main()
