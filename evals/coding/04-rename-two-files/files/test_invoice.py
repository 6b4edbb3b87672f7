import inspect
import unittest

import invoice
import orders

LINES = [("pen", 3, 1.5), ("pad", 2, 4.0)]


class RenameTest(unittest.TestCase):
    def test_new_name(self):
        self.assertEqual(orders.order_total(LINES), 12.5)

    def test_old_name_is_gone(self):
        self.assertFalse(hasattr(orders, "calc_total"))
        self.assertNotIn("calc_total", inspect.getsource(invoice))

    def test_invoice_uses_it(self):
        self.assertEqual(invoice.render("Ada", LINES), "Ada: 2 lines, total 12.50")


if __name__ == "__main__":
    unittest.main()
