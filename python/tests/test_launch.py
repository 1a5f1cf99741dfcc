"""The launch path the torch front ends share, without a GPU: each front end's
forward on CPU tensors with libattngen's kernel calls (look-up, plan, launch)
and torch's CUDA stream replaced, checking the spec asked for, the cache of
loaded kernels and the attnrt_forward_args passed. Needs torch (the CPU build
will do); skipped without it.

    PYTHONPATH=python python3 -m unittest python/tests/test_launch.py -v
"""

import contextlib
import types
import unittest
from unittest import mock

import attngen
from attngen import _capi, _torch_attention, _torch_kvcache, _torch_varlen

try:
    import torch
except ImportError:
    torch = None

#: The handle the faked look-up returns.
KERNEL = 1234


@unittest.skipIf(torch is None, "needs torch (a CPU build is enough)")
class LaunchPathTest(unittest.TestCase):
    def setUp(self):
        attngen.clear_memory_cache()
        self.specs, self.launches = [], []
        lib = _capi.lib
        fakes = {"attngen_jit_get_kernel": self.get_kernel,
                 "attngen_kernel_plan": self.plan,
                 "attngen_kernel_forward": self.forward}
        with contextlib.ExitStack() as stack:
            for name, fake in fakes.items():
                stack.enter_context(mock.patch.object(lib, name, fake))
            stack.enter_context(mock.patch.object(
                torch.cuda, "current_stream",
                lambda device=None: types.SimpleNamespace(cuda_stream=7)))
            stack.enter_context(mock.patch.object(torch.cuda, "device",
                                                  lambda device: contextlib.nullcontext()))
            stack.enter_context(mock.patch.object(torch.cuda, "is_current_stream_capturing",
                                                  lambda: False))
            self.addCleanup(stack.pop_all().close)
        self.addCleanup(attngen.clear_memory_cache)  # no fake kernel outlives the test

    def get_kernel(self, jit, spec, handle):
        spec = spec._obj
        self.specs.append({name: getattr(spec, name) for name, _ in spec._fields_})
        handle._obj.value = KERNEL
        return 0

    def plan(self, kernel, args, splits, workspace_bytes):
        splits._obj.value = 3
        workspace_bytes._obj.value = 0
        return 0

    def forward(self, kernel, args, stream):
        self.assertEqual((kernel, stream), (KERNEL, 7))
        args = args._obj
        self.launches.append({name: tuple(getattr(args, name)) if name.endswith("strides")
                              else getattr(args, name) for name, _ in args._fields_})
        return 0

    @staticmethod
    def randn(*shape):
        return torch.randn(*shape).to(torch.bfloat16)

    def test_dense(self):
        q, k = self.randn(2, 100, 4, 64), self.randn(2, 77, 2, 64)
        v = self.randn(2, 77, 2, 128)[..., :64]
        out, lse = _torch_attention._forward(q, k, v, True, 0.0, True, "bottom-right", 30.0,
                                             256, -1)
        self.assertEqual((out.shape, out.dtype, lse.shape), (q.shape, q.dtype, (2, 4, 100)))
        [spec], [args] = self.specs, self.launches
        self.assertEqual((spec["head_dim"], spec["dtype"], spec["causal"], spec["causal_align"],
                          spec["scale"], spec["softcap"], spec["window_left"],
                          spec["window_right"], spec["varlen"], spec["kv_cache"]),
                         (64, _capi.DTYPE_BF16, 1, 1, 0.0, 30.0, 256, -1, 0, 0))
        self.assertEqual((args["q"], args["k"], args["v"], args["o"], args["lse"]),
                         (q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                          lse.data_ptr()))
        self.assertEqual((args["batch"], args["nq"], args["nk"], args["num_heads"],
                          args["num_kv_heads"], args["head_dim"]), (2, 100, 77, 4, 2, 64))
        self.assertEqual((args["q_strides"], args["v_strides"], args["o_strides"]),
                         (q.stride(), v.stride(), out.stride()))
        # A second call with the same spec is a cache hit; no lse, no pointer.
        _, no_lse = _torch_attention._forward(q, k, v, True, 0.0, False, "bottom-right", 30.0,
                                              256, -1)
        self.assertEqual((len(self.specs), self.launches[1]["lse"], no_lse.shape),
                         (1, None, (0,)))

    def test_varlen(self):
        q, k = self.randn(300, 8, 64), self.randn(500, 2, 64)
        cu_q = torch.tensor([0, 100, 100, 300], dtype=torch.int32)
        cu_k = torch.tensor([0, 250, 250, 500], dtype=torch.int32)
        out, lse = _torch_varlen._forward(q, k, k, cu_q, cu_k, 200, 250, False, 0.5, True,
                                          "top-left", 0.0, -1, -1, True)
        self.assertEqual((out.shape, lse.shape), (q.shape, (8, 300)))
        [spec], [args] = self.specs, self.launches
        self.assertEqual((spec["varlen"], spec["scale"], spec["causal"]), (1, 0.5, 0))
        self.assertEqual((args["batch"], args["nq"], args["nk"], args["max_seqlen_q"],
                          args["max_seqlen_k"]), (3, 300, 500, 200, 250))
        self.assertEqual((args["cu_seqlens_q"], args["cu_seqlens_k"]),
                         (cu_q.data_ptr(), cu_k.data_ptr()))
        # Packed tensors have no batch dimension: its stride is 0.
        self.assertEqual((args["q_strides"], args["o_strides"]),
                         ((0, 512, 64, 1), (0, 512, 64, 1)))
        # Wrong cu_seqlens fail on the host before any launch.
        with self.assertRaises(attngen.InvalidInputError):
            _torch_varlen._forward(q, k, k, cu_q.flip(0), cu_k, 200, 250, False, 0.5, True,
                                   "top-left", 0.0, -1, -1, True)
        self.assertEqual(len(self.launches), 1)

    def test_paged_varlen(self):
        # A varlen batch over a paged K/V: the paged kernel, nk the table's
        # reach, the table and the pages' extents in the args.
        q, pages = self.randn(300, 8, 64), self.randn(10, 64, 2, 64)
        table = torch.arange(12, dtype=torch.int32).remainder(10).reshape(3, 4)
        cu_q = torch.tensor([0, 100, 100, 300], dtype=torch.int32)
        cu_k = torch.tensor([0, 250, 250, 500], dtype=torch.int32)
        out, _ = _torch_varlen._forward(q, pages, pages, cu_q, cu_k, 200, 250, False, 0.0,
                                        False, "bottom-right", 0.0, -1, -1, True, None, table)
        self.assertEqual(out.shape, q.shape)
        [spec], [args] = self.specs, self.launches
        self.assertEqual((spec["varlen"], spec["kv_cache"], spec["page_size"]), (1, 0, 64))
        self.assertEqual((args["nk"], args["page_size"], args["max_blocks"], args["num_blocks"],
                          args["block_table"], args["block_table_stride"],
                          args["cache_seqlens"]),
                         (256, 64, 4, 10, table.data_ptr(), 4, None))
        self.assertEqual(args["k_strides"], pages.stride())
        # A sequence longer than its row of the table fails on the host.
        with self.assertRaises(attngen.InvalidInputError):
            _torch_varlen._forward(q, pages, pages, cu_q, cu_k + torch.tensor(
                [0, 7, 7, 7], dtype=torch.int32), 200, 257, False, 0.0, False,
                "bottom-right", 0.0, -1, -1, True, None, table)
        self.assertEqual(len(self.launches), 1)

    def test_short_causal_tiles(self):
        # d64 plain causal calls up to 2k take 128-row tiles on sm_90a; longer
        # ones, other masks and sm_80 keep the defaults.
        from attngen import _torch_launch
        q, k = self.randn(2, 1024, 4, 64), self.randn(2, 1024, 4, 64)
        with mock.patch.dict(_torch_launch._ARCH_OF_DEVICE, {None: "sm_90a"}):
            _torch_attention._forward(q, k, k, True, 0.0, False, "bottom-right", 0.0, -1, -1)
            _torch_attention._forward(q, k, k, False, 0.0, False, "bottom-right", 0.0, -1, -1)
            _torch_attention._forward(q, k, k, True, 0.0, False, "bottom-right", 30.0, -1, -1)
            long_q = self.randn(1, 4096, 4, 64)
            _torch_attention._forward(long_q, long_q, long_q, True, 0.0, False,
                                      "bottom-right", 0.0, -1, -1)
            cu = torch.tensor([0, 1024, 2048], dtype=torch.int32)
            _torch_varlen._forward(q[0].repeat(2, 1, 1), k[0].repeat(2, 1, 1),
                                   k[0].repeat(2, 1, 1), cu, cu, 1024, 1024, True, 0.0,
                                   False, "bottom-right", 0.0, -1, -1, False)
        with mock.patch.dict(_torch_launch._ARCH_OF_DEVICE, {None: "sm_80"}):
            q16 = q.to(torch.float16)
            _torch_attention._forward(q16, q16, q16, True, 0.0, False, "bottom-right", 0.0,
                                      -1, -1)
        tiles = [(spec["block_m"], spec["num_warps"]) for spec in self.specs]
        self.assertEqual(tiles, [(128, 8), (0, 0), (0, 0), (0, 0), (128, 8), (0, 0)])

    def test_kvcache(self):
        q, pages = self.randn(2, 3, 8, 64), self.randn(8, 16, 2, 64)
        table = torch.arange(8, dtype=torch.int32).reshape(2, 4)
        lengths = torch.tensor([3, 64], dtype=torch.int32)
        out, lse = _torch_kvcache._forward(q, pages, pages, lengths, table, True, 0.0, 0.0,
                                           False, 0)
        self.assertEqual((out.shape, lse.shape), (q.shape, (0,)))
        [spec], [args] = self.specs, self.launches
        self.assertEqual((spec["kv_cache"], spec["page_size"], spec["split_kv"],
                          spec["head_pack"], spec["causal"], spec["causal_align"]),
                         (1, 16, 1, 4, 1, 1))
        self.assertEqual((args["batch"], args["nq"], args["nk"], args["num_splits"],
                          args["page_size"], args["max_blocks"], args["num_blocks"]),
                         (2, 3, 64, 3, 16, 4, 8))
        self.assertEqual((args["cache_seqlens"], args["block_table"], args["lse"]),
                         (lengths.data_ptr(), table.data_ptr(), None))
        # num_splits=1 never splits: another kernel.
        _torch_kvcache._forward(q, pages, pages, lengths, table, True, 0.0, 0.0, False, 1)
        self.assertEqual([spec["split_kv"] for spec in self.specs], [1, 0])


if __name__ == "__main__":
    unittest.main()
