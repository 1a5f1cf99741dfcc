"""The pieces the package's torch custom ops (attention, attention_varlen,
attention_with_kvcache) share, without a GPU: the refused backward pass and
the fake outputs of a padded batch.

    PYTHONPATH=python python3 -m unittest python/tests/test_custom_op.py -v
"""

import unittest

try:
    import torch
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "needs torch")
class CustomOpHelperTest(unittest.TestCase):
    def test_refused_backward_says_why(self):
        from attngen._torch_launch import refuse_backward

        @torch.library.custom_op("attngen_test::twice", mutates_args=(), device_types="cpu")
        def twice(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x * 2, x.new_zeros(0)

        refuse_backward(twice, "twice has no backward pass")
        x = torch.ones(3, requires_grad=True)
        out, _ = twice(x)
        with self.assertRaisesRegex(NotImplementedError, "twice has no backward pass"):
            out.sum().backward()

    def test_outputs_like_a_padded_batch(self):
        from attngen._torch_launch import outputs_like

        q = torch.empty(2, 5, 3, 8, device="meta", dtype=torch.bfloat16)
        out, lse = outputs_like(q, return_lse=True)
        self.assertEqual((out.shape, out.dtype), (q.shape, torch.bfloat16))
        self.assertEqual((lse.shape, lse.dtype), (torch.Size([2, 3, 5]), torch.float32))
        _, no_lse = outputs_like(q, return_lse=False)
        self.assertEqual(no_lse.shape, torch.Size([0]))


if __name__ == "__main__":
    unittest.main()
