"""The argument checks attngen.compile, attention, attention_varlen and
attention_with_kvcache share, without a GPU: the scalar checks and the kernel
spec (_spec, no torch needed), then (with torch, on CPU tensors) the tensor
checks every front end runs before its device check, and the custom ops'
schemas and fake outputs on meta tensors.

    PYTHONPATH=python python3 -m unittest python/tests/test_checks.py -v
"""

import contextlib
import math
import unittest

import attngen
from attngen import _capi, _errors, _jit, _spec

try:
    import torch
except ImportError:
    torch = None


class ScalarCheckTest(unittest.TestCase):
    def assertInvalid(self, needle, function, *args):
        with self.assertRaises(attngen.InvalidInputError) as caught:
            function(*args)
        self.assertIn(needle, str(caught.exception))
        self.assertEqual(caught.exception.status, "ATTNGEN_ERROR_INVALID_SPEC")

    def assertTypeError(self, needle, function, *args):
        with self.assertRaises(TypeError) as caught:
            function(*args)
        self.assertIn(needle, str(caught.exception))

    def test_dtype_names(self):
        # The C API's names, torch's, and torch dtypes as str() spells them.
        for name in ("bf16", "bfloat16", "torch.bfloat16"):
            self.assertEqual(_spec.dtype_code(name), _capi.DTYPE_BF16)
        for name in ("f16", "fp16", "float16", "half", "torch.float16"):
            self.assertEqual(_spec.dtype_code(name), _capi.DTYPE_F16)
        for name in ("fp32", "torch.float32", "bf16\0", "BF16"):
            self.assertInvalid("use 'bf16', 'f16' or 'e4m3'", _spec.dtype_code, name)

    def test_scale(self):
        self.assertEqual(_spec.scale_value(None), 0.0)
        self.assertEqual(_spec.scale_value(2), 2.0)
        for bad in (True, "big", 10**400, [1.0]):
            self.assertInvalid("scale must be a number or None", _spec.scale_value, bad)
        for bad in (0.0, -1.0, math.nan, math.inf):
            self.assertInvalid("scale must be positive and finite", _spec.scale_value, bad)

    def test_c_ints(self):
        self.assertEqual(_spec.c_int("head_dim", 2**31 - 1), 2**31 - 1)
        self.assertEqual(_spec.c_int("head_dim", -2**31), -2**31)
        self.assertInvalid("head_dim = 2147483648 is out of range", _spec.c_int, "head_dim",
                           2**31)
        for bad in (True, 1.0, "8", None):
            self.assertInvalid("head_dim must be an int", _spec.c_int, "head_dim", bad)

    def test_flags(self):
        self.assertEqual((_spec.flag("f", "causal", True), _spec.flag("f", "causal", False)),
                         (1, 0))
        for bad in (1, 0, "False", None):
            self.assertTypeError("attngen.f: causal must be a bool (True or False)", _spec.flag,
                                 "f", "causal", bad)

    def test_strings(self):
        self.assertEqual(_spec.c_string("compile", "arch", "sm_80"), b"sm_80")
        self.assertTypeError("attngen.compile: arch must be a str", _spec.c_string, "compile",
                             "arch", 80)
        self.assertInvalid("contains a NUL character", _spec.c_string, "compile", "arch",
                           "sm_80\0")

    def test_causal_align(self):
        self.assertEqual(_spec.causal_align_code("f", "top-left"), 0)
        self.assertEqual(_spec.causal_align_code("f", "bottom-right"), 1)
        self.assertTypeError("attngen.f: causal_align must be a str", _spec.causal_align_code,
                             "f", None)
        self.assertInvalid("causal_align 'bottom_right' is not supported; use 'top-left'",
                           _spec.causal_align_code, "f", "bottom_right")

    def test_softcap(self):
        self.assertEqual(_spec.softcap_value("f", 30), 30.0)
        self.assertIsInstance(_spec.softcap_value("f", 30), float)
        for bad in ("30", True, None):
            self.assertTypeError("attngen.f: softcap must be a number", _spec.softcap_value,
                                 "f", bad)
        self.assertInvalid("does not fit a double", _spec.softcap_value, "f", 10**400)

    def test_window(self):
        self.assertEqual(_spec.window_sides("f", (256, 0)), (256, 0))
        self.assertEqual(_spec.window_sides("f", [-1, -1]), (-1, -1))
        for bad in (256, (1, 2, 3), None, "ab"):
            self.assertTypeError("attngen.f: window_size must be a (left, right) pair of ints",
                                 _spec.window_sides, "f", bad)
        self.assertTypeError("window_size left must be an int", _spec.window_sides, "f",
                             (1.5, 0))
        self.assertTypeError("window_size right must be an int", _spec.window_sides, "f",
                             (1, False))
        self.assertInvalid("window_size left = 2147483648 is out of range", _spec.window_sides,
                           "f", (2**31, 0))

    def test_call_options(self):
        # Without a diagonal the alignment means nothing: one kernel for both.
        options = _spec.call_options("f", False, None, "top-left", 0, (-1, -1))
        self.assertEqual(options, _spec.CallOptions(False, 0.0, "bottom-right", 0.0, -1, -1))
        self.assertEqual(_spec.call_options("f", True, 0.5, "bottom-right", 30, [-1, -1]),
                         _spec.CallOptions(True, 0.5, "bottom-right", 30.0, -1, -1))
        self.assertEqual(_spec.call_options("f", False, None, "bottom-right", 0.0, (64, 0)),
                         _spec.CallOptions(False, 0.0, "bottom-right", 0.0, 64, 0))
        # A front end's own flags are checked by their names.
        _spec.call_options("f", False, None, "top-left", 0.0, (-1, -1), return_lse=True)
        self.assertTypeError("attngen.f: return_lse must be a bool",
                             lambda: _spec.call_options("f", False, None, "top-left", 0.0,
                                                        (-1, -1), return_lse="no"))
        self.assertTypeError("attngen.f: causal must be a bool",
                             lambda: _spec.call_options("f", 1, None, "top-left", 0.0, (-1, -1)))
        self.assertInvalid("scale must be positive and finite",
                           lambda: _spec.call_options("f", False, -1.0, "top-left", 0.0,
                                                      (-1, -1)))

    def test_kernel_spec(self):
        # Equal requests are one key of the loaded-kernel cache; the struct
        # carries every field, checked.
        spec = _spec.KernelSpec(head_dim=64, dtype="torch.float16", causal=True,
                                causal_align="bottom-right", softcap=30, window_size=(64, 0),
                                varlen=True)
        self.assertEqual({spec: 1}[_spec.KernelSpec(64, "torch.float16", True, "bottom-right",
                                                    None, 30, (64, 0), varlen=True)], 1)
        struct = spec.struct("attention")
        self.assertEqual((struct.head_dim, struct.dtype, struct.causal, struct.causal_align),
                         (64, _capi.DTYPE_F16, 1, 1))
        self.assertEqual((struct.softcap, struct.window_left, struct.window_right),
                         (30.0, 64, 0))
        self.assertEqual((struct.scale, struct.with_lse, struct.varlen, struct.head_pack),
                         (0.0, 1, 1, 1))
        self.assertEqual(spec.describe(), "torch.float16, head_dim 64, causal=True, "
                         "softcap=30, window_size=(64, 0), varlen=True")
        self.assertEqual(_spec.KernelSpec().describe(), "bf16, head_dim 128")
        self.assertTypeError("attngen.attention_varlen: varlen must be a bool",
                             _spec.KernelSpec(varlen=1).struct, "attention_varlen")

    def test_head_dims(self):
        self.assertEqual(_spec.supported_head_dims(), frozenset(range(8, 257, 8)))
        self.assertEqual(_spec.describe_head_dims(range(8, 257, 8)),
                         "8 to 256 in steps of 8")
        self.assertEqual(_spec.describe_head_dims({8, 24, 32}), "8, 24, 32")
        _spec.check_head_dim_with_compiler(96)
        with self.assertRaises(attngen.InvalidInputError) as caught:
            _spec.check_head_dim_with_compiler(60)
        self.assertIn("head dimension 60 is not supported: use a multiple of 8",
                      str(caught.exception))

    def test_statuses_become_errors(self):
        _errors.check_status(0)
        for status, error in ((_capi.STATUS_INVALID_ARGUMENT, attngen.InvalidInputError),
                              (_capi.STATUS_INVALID_SPEC, attngen.InvalidInputError),
                              (6, attngen.AttngenError)):
            with self.subTest(status=status):
                with self.assertRaises(attngen.AttngenError) as caught:
                    _errors.check_status(status, "doing it")
                self.assertIs(type(caught.exception), error)
                self.assertTrue(str(caught.exception).startswith("doing it: "))
                self.assertTrue(caught.exception.status.startswith("ATTNGEN_ERROR_"))
        self.assertEqual(_errors.invalid_argument("x").status, "ATTNGEN_ERROR_INVALID_ARGUMENT")
        self.assertEqual(_errors.invalid_spec("x").status, "ATTNGEN_ERROR_INVALID_SPEC")
        # Tracebacks name the errors as users catch them.
        for error in (attngen.AttngenError, attngen.InvalidInputError):
            self.assertEqual(error.__module__, "attngen")

    def test_kernel_look_up_failure_says_which_kernel(self):
        # The one path from a spec to a loaded kernel: a failure (here no
        # driver, on a GPU machine the refused head dim) names the kernel and
        # leaves nothing in the cache.
        spec = _spec.KernelSpec(head_dim=100, causal=True)
        with self.assertRaises(attngen.AttngenError) as caught:
            _jit.loaded_kernel(spec, 0, contextlib.nullcontext)
        self.assertTrue(str(caught.exception).startswith(
            "getting the kernel for bf16, head_dim 100, causal=True: "), str(caught.exception))
        self.assertNotIn((0, spec), _jit._loaded)

    def test_clear_memory_cache_forgets_loaded_kernels(self):
        _jit._loaded[("test", _spec.KernelSpec())] = 1
        attngen.clear_memory_cache()
        self.assertEqual(_jit._loaded, {})


@unittest.skipIf(torch is None, "needs torch (a CPU build is enough)")
class TensorCheckTest(unittest.TestCase):
    """Each front end's tensors through the shared checks, on CPU tensors: the
    device check comes last, so a wrong argument fails with its own message
    and a right call fails on the device."""

    @staticmethod
    def zeros(*shape, dtype=None):
        return torch.zeros(*shape, dtype=dtype or torch.bfloat16)

    def dense(self, q=None, k=None, v=None, **kwargs):
        q = self.zeros(2, 100, 8, 64) if q is None else q
        k = self.zeros(2, 77, 2, 64) if k is None else k
        return attngen.attention(q, k, k if v is None else v, **kwargs)

    def varlen(self, q=None, k=None, v=None, **kwargs):
        q = self.zeros(300, 8, 64) if q is None else q
        k = self.zeros(500, 2, 64) if k is None else k
        cu_q = torch.tensor([0, 100, 300], dtype=torch.int32)
        cu_k = torch.tensor([0, 250, 500], dtype=torch.int32)
        return attngen.attention_varlen(q, k, k if v is None else v, cu_q, cu_k, 200, 250,
                                        **kwargs)

    def kvcache(self, q=None, k=None, v=None, **kwargs):
        q = self.zeros(2, 1, 8, 64) if q is None else q
        k = self.zeros(2, 64, 2, 64) if k is None else k
        return attngen.attention_with_kvcache(q, k, k if v is None else v, **kwargs)

    def expect(self, error, needle, call, **kwargs):
        with self.assertRaises(error) as caught:
            call(**kwargs)
        self.assertIn(needle, str(caught.exception))
        return caught.exception

    def test_right_arguments_fail_only_on_the_device(self):
        for call in (self.dense, self.varlen, self.kvcache):
            with self.subTest(call=call.__name__):
                error = self.expect(attngen.InvalidInputError,
                                    "q is on cpu; attngen runs on CUDA devices", call,
                                    scale=0.5, softcap=30.0, causal=True, return_lse=True)
                self.assertEqual(error.status, "ATTNGEN_ERROR_INVALID_ARGUMENT")

    def test_attention_argument_checks(self):
        # attngen.attention's checks, each on its own, without a GPU.
        bad = attngen.InvalidInputError
        z = self.zeros
        cases = [
            (TypeError, "attngen.attention: v must be a torch.Tensor, got str", dict(v="v")),
            (bad, "q must be 4-D (batch, seqlen, heads, head_dim); got shape (100, 8, 64)",
             dict(q=z(100, 8, 64))),
            (bad, "q has dtype torch.float32; attngen supports torch.float16 and torch.bfloat16",
             dict(q=torch.zeros(2, 100, 8, 64))),
            (bad, "k has dtype torch.float16 but q has torch.bfloat16: use one dtype",
             dict(k=z(2, 77, 2, 64, dtype=torch.float16),
                  v=z(2, 77, 2, 64, dtype=torch.float16))),
            (bad, "k and v must have the same shape but for the head dim; got k (2, 77, 2, 64) "
             "and v (2, 10, 2, 64)", dict(v=z(2, 10, 2, 64))),
            (bad, "q has head_dim 64 but k has head_dim 32", dict(k=z(2, 77, 2, 32))),
            (bad, "head dimension 60 is not supported: use a multiple of 8",
             dict(v=z(2, 77, 2, 60))),
            (bad, "head dimension 60 is not supported: use a multiple of 8",
             dict(q=z(2, 100, 8, 60), k=z(2, 77, 2, 60))),
            (bad, "q has 3 heads and k/v have 2: the number of q heads must be a multiple of "
             "the number of k/v heads", dict(q=z(2, 100, 3, 64))),
            (bad, "q has batch 2 but k and v have batch 1", dict(k=z(1, 77, 2, 64))),
            (bad, "k and v have sequence length 0: attention needs at least one key",
             dict(k=z(2, 0, 2, 64))),
            (bad, "the last dimension (head_dim) must be contiguous (stride 1)",
             dict(k=z(2, 77, 64, 2).transpose(-1, -2))),
            (bad, "the strides of the batch, seqlen and heads dimensions must be multiples of 8",
             dict(q=z(2, 100, 8, 68)[..., :64])),
            (bad, "scale must be positive and finite", dict(scale=-1.0)),
            (bad, "causal_align 'bottom_right' is not supported",
             dict(causal=True, causal_align="bottom_right")),
            (TypeError, "attngen.attention: causal must be a bool", dict(causal=1)),
            (TypeError, "attngen.attention: return_lse must be a bool", dict(return_lse=None)),
            (TypeError, "softcap must be a number", dict(softcap="30")),
            (TypeError, "window_size must be a (left, right) pair of ints", dict(window_size=64)),
        ]
        for error, needle, kwargs in cases:
            with self.subTest(needle=needle):
                self.expect(error, needle, self.dense, **kwargs)

    def test_value_head_dim(self):
        # v may have a head dim of its own in the dense, varlen and KV-cache
        # forward and the backward (their checks pass; only the CPU device is
        # refused); the rest of v's shape is k's.
        bad = attngen.InvalidInputError
        z = self.zeros
        for call, v in ((self.dense, z(2, 77, 2, 128)), (self.varlen, z(500, 2, 128)),
                        (self.kvcache, z(2, 64, 2, 128))):
            with self.subTest(call=call.__name__):
                self.expect(bad, "q is on cpu; attngen runs on CUDA devices", call, v=v)
        self.expect(bad, "k_cache and v_cache must have the same shape but for the head dim",
                    self.kvcache, v=z(2, 63, 2, 128))
        q, k, v = z(2, 100, 8, 192), z(2, 77, 2, 192), z(2, 77, 2, 128)
        lse = torch.zeros(2, 8, 100)
        self.expect(bad, "q is on cpu; attngen runs on CUDA devices", attngen.attention_backward,
                    q=q, k=k, v=v, out=z(2, 100, 8, 128), dout=z(2, 100, 8, 128), lse=lse)
        # out and dout have v's head dim.
        self.expect(bad, "dout must have the forward output's shape (2, 100, 8, 128)",
                    attngen.attention_backward, q=q, k=k, v=v, out=z(2, 100, 8, 128),
                    dout=z(2, 100, 8, 192), lse=lse)
        meta = dict(device="meta", dtype=torch.bfloat16)
        out, lse = torch.ops.attngen.attention(q.to("meta"), k.to("meta"), v.to("meta"), True,
                                               0.0, True, "bottom-right", 0.0, -1, -1)
        self.assertEqual((out.shape, lse.shape), ((2, 100, 8, 128), (2, 8, 100)))
        packed_v = torch.empty(500, 2, 128, **meta)
        cu = torch.empty(3, dtype=torch.int32, device="meta")
        out, _ = torch.ops.attngen.attention_varlen(
            torch.empty(300, 8, 64, **meta), torch.empty(500, 2, 64, **meta), packed_v, cu, cu,
            200, 250, True, 0.0, True, "bottom-right", 0.0, -1, -1, True)
        self.assertEqual(out.shape, (300, 8, 128))

    def test_each_front_end_names_its_layout(self):
        # One check, each front end's words for its tensors.
        bad = attngen.InvalidInputError
        z = self.zeros
        self.expect(bad, "q must be 3-D (total_tokens, heads, head_dim), the sequences packed "
                    "along the rows; got shape (1, 300, 8, 64) (for (batch, seqlen, heads, "
                    "head_dim) tensors use attngen.attention)", self.varlen, q=z(1, 300, 8, 64))
        self.expect(bad, "q must be 4-D; got shape (8, 64)", self.kvcache, q=z(8, 64))
        self.expect(bad, "the strides of the tokens and heads dimensions must be multiples of 8",
                    self.varlen, q=z(300, 8, 68)[..., :64])
        self.expect(bad, "the strides of its first three dimensions must be multiples of 8",
                    self.kvcache, q=z(2, 1, 8, 68)[..., :64])
        self.expect(bad, "q has 3 heads and k/v have 2", self.varlen, q=z(300, 3, 64))
        self.expect(bad, "q has 8 heads and the caches 3", self.kvcache, k=z(2, 64, 3, 64))
        self.expect(bad, "q has head_dim 64 but k_cache has head_dim 128",
                    self.kvcache, k=z(2, 64, 2, 128))
        self.expect(bad, "k_cache and v_cache must have the same shape but for the head dim; got "
                    "k_cache (2, 64, 2, 64) and v_cache (2, 63, 2, 64)", self.kvcache,
                    v=z(2, 63, 2, 64))

    def test_every_front_end_runs_the_shared_checks(self):
        bad = attngen.InvalidInputError
        z = self.zeros
        for call, q, k in ((self.dense, z(2, 100, 8, 60), z(2, 77, 2, 60)),
                           (self.varlen, z(300, 8, 60), z(500, 2, 60)),
                           (self.kvcache, z(2, 1, 8, 60), z(2, 64, 2, 60))):
            with self.subTest(call=call.__name__):
                self.expect(bad, "head dimension 60 is not supported: use a multiple of 8",
                            call, q=q, k=k)
                self.expect(bad, "q has dtype torch.float32; attngen supports", call,
                            q=q.float())
                self.expect(TypeError, "q must be a torch.Tensor, got list", call, q=[1])
                self.expect(bad, "scale must be positive and finite", call, scale=math.inf)
                self.expect(TypeError, "softcap must be a number", call, softcap=None)
                self.expect(TypeError, "causal must be a bool (True or False)", call,
                            causal="yes")
                self.expect(TypeError, "window_size must be a (left, right) pair of ints",
                            call, window_size=(1, 2, 3))
                self.expect(bad, "q is on meta; attngen runs on CUDA devices", call,
                            q=z(*q.shape[:-1], 64).to("meta"))

    def test_compiler_checks_under_fake_tensors(self):
        # Traced calls (fake tensors, torch.compile, export) never reach the
        # compiler, so each front end asks it about the scalar options first:
        # what an eager call refuses, a traced one refuses too.
        from torch._subclasses.fake_tensor import FakeTensorMode
        bad = [(dict(softcap=float("nan")), "softcap nan must be positive and finite"),
               (dict(softcap=-1.0), "softcap -1 must be positive and finite"),
               (dict(window_size=(-2, 0)), "window left = -2 is out of range")]
        with FakeTensorMode():
            q = torch.empty(1, 64, 4, 64, dtype=torch.bfloat16, device="cuda")
            packed = torch.empty(64, 4, 64, dtype=torch.bfloat16, device="cuda")
            cu = torch.tensor([0, 64], dtype=torch.int32, device="cuda")
            calls = {"attention": lambda **kw: attngen.attention(q, q, q, **kw),
                     "attention_varlen": lambda **kw: attngen.attention_varlen(
                         packed, packed, packed, cu, cu, 64, 64, **kw),
                     "attention_with_kvcache": lambda **kw: attngen.attention_with_kvcache(
                         q[:, :1], q, q, **kw)}
            for name, call in calls.items():
                for kwargs, needle in bad:
                    with self.subTest(function=name, **{k: str(v) for k, v in kwargs.items()}):
                        with self.assertRaises(attngen.InvalidInputError) as caught:
                            call(**kwargs)
                        self.assertIn(needle, str(caught.exception))
                        self.assertNotIn("(arch sm_90a)", str(caught.exception))
            # flash_attn's causal window spelling is taken, traced as eagerly.
            out = attngen.attention(q, q, q, causal=True, window_size=(32, 8))
            self.assertEqual(out.shape, q.shape)

    def test_compiler_checks_trace_without_graph_breaks(self):
        # Under torch.compile(fullgraph=True) the options' check makes no
        # ctypes call (it would break the graph), with dynamic shapes too.
        from attngen._torch_checks import call_options

        def step(x):
            call_options("attention", False, None, "bottom-right", 30.0, (-1, -1))
            return x + 1

        for dynamic in (False, True):
            compiled = torch.compile(step, fullgraph=True, backend="eager", dynamic=dynamic)
            self.assertTrue(torch.equal(compiled(torch.ones(2)), torch.full((2,), 2.0)))

    def test_ops_on_meta_tensors(self):
        # The custom ops keep their names and schemas; their fake outputs are
        # what torch.compile and torch.export trace.
        meta = dict(device="meta", dtype=torch.bfloat16)
        q, k = torch.empty(2, 100, 4, 64, **meta), torch.empty(2, 77, 2, 64, **meta)
        out, lse = torch.ops.attngen.attention(q, k, k, True, 0.0, True, "bottom-right", 30.0,
                                               256, -1)
        self.assertEqual((out.shape, out.dtype, lse.shape, lse.dtype),
                         (q.shape, torch.bfloat16, (2, 4, 100), torch.float32))
        packed_q, packed_k = torch.empty(300, 8, 64, **meta), torch.empty(500, 2, 64, **meta)
        cu = torch.empty(3, dtype=torch.int32, device="meta")
        out, lse = torch.ops.attngen.attention_varlen(packed_q, packed_k, packed_k, cu, cu, 200,
                                                      250, True, 0.0, True, "bottom-right", 0.0,
                                                      64, -1, True)
        self.assertEqual((out.shape, lse.shape), (packed_q.shape, (8, 300)))
        out, lse = torch.ops.attngen.attention_with_kvcache(q[:, :1], k, k, None, None, True,
                                                            0.0, 0.0, False, 0, 64, -1)
        self.assertEqual((out.shape, lse.shape), ((2, 1, 4, 64), (0,)))
        torch.library.opcheck(torch.ops.attngen.attention.default,
                              (q, k, k, True, 0.0, True, "bottom-right", 30.0, 256, -1),
                              test_utils=("test_schema", "test_faketensor"))


if __name__ == "__main__":
    unittest.main()
