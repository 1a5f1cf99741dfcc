"""The package's shape: its modules import only modules below them (no cycle,
nothing imported back from attngen/__init__.py, which only re-exports), and
`dir(attngen)` shows the API, not the standard library. Reads the sources
with `ast`; needs no GPU and no torch.

    PYTHONPATH=python python3 -m unittest python/tests/test_package_layout.py -v
"""

import ast
import os
import types
import unittest

import attngen

PACKAGE = os.path.dirname(os.path.abspath(attngen.__file__))


def sources():
    """{module name: (source text, its syntax tree)} of every module of the package."""
    modules = {}
    for file in sorted(os.listdir(PACKAGE)):
        if file.endswith(".py"):
            with open(os.path.join(PACKAGE, file)) as f:
                text = f.read()
            modules[file[:-3]] = (text, ast.parse(text, file))
    return modules


def package_imports(tree):
    """[(module imported, names taken from it)] for every import of the
    package itself in `tree`: `from . import x` imports module x where x is
    a file of the package, else the name x of __init__."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names]
            if node.level == 1 and node.module is None:
                found += [(name, []) if os.path.exists(os.path.join(PACKAGE, name + ".py"))
                          else ("__init__", [name]) for name in names]
            elif node.level == 1:
                found.append((node.module, names))
            elif node.level == 0 and (node.module or "").split(".")[0] == "attngen":
                found.append(("__init__", names))
        elif isinstance(node, ast.Import):
            found += [("__init__", []) for alias in node.names
                      if alias.name.split(".")[0] == "attngen"]
    return found


class PackageLayoutTest(unittest.TestCase):
    def setUp(self):
        self.modules = sources()

    def test_no_module_imports_the_package_back(self):
        # A submodule that imported attngen (or a name of __init__.py) would
        # run, or need, __init__ half-way through: the old cycle.
        for name, (_, tree) in self.modules.items():
            for module, names in package_imports(tree):
                with self.subTest(module=name, imports=module):
                    self.assertNotEqual(module, "__init__", f"{name} imports {names} from "
                                        "the package's __init__.py")
                    self.assertIn(module, self.modules)
                    self.assertNotEqual(module, name)

    def test_imports_have_no_cycle(self):
        graph = {name: {module for module, _ in package_imports(tree)}
                 for name, (_, tree) in self.modules.items()}
        done, path = set(), []

        def visit(name):
            self.assertNotIn(name, path, f"import cycle: {' -> '.join(path + [name])}")
            if name in done:
                return
            path.append(name)
            for module in sorted(graph.get(name, ())):
                visit(module)
            path.pop()
            done.add(name)

        for name in sorted(graph):
            visit(name)

    def test_init_only_imports_and_reexports(self):
        _, tree = self.modules["__init__"]
        for node in tree.body:
            with self.subTest(line=node.lineno):
                if isinstance(node, ast.Expr):  # the docstring
                    self.assertIsInstance(node.value, ast.Constant)
                elif isinstance(node, ast.Assign):  # __all__, or a private name re-exported
                    self.assertIsInstance(node.value, (ast.List, ast.Attribute))
                else:
                    self.assertIsInstance(node, ast.ImportFrom)
                    self.assertEqual(node.level, 1)

    def test_no_import_waits_for_the_module_to_be_defined(self):
        for name, (text, _) in self.modules.items():
            with self.subTest(module=name):
                self.assertNotIn("E402", text)

    def test_dir_shows_the_api_and_no_stdlib_module(self):
        public = {name for name in dir(attngen) if not name.startswith("_")}
        self.assertEqual(public, set(attngen.__all__) - {"__version__"})
        for name in dir(attngen):
            value = getattr(attngen, name)
            if isinstance(value, types.ModuleType):
                with self.subTest(name=name):
                    self.assertTrue(value.__name__.startswith("attngen."), value.__name__)
        # gpu/'s scripts use these private names.
        self.assertTrue(callable(attngen._abi.struct_type))
        self.assertTrue(os.path.exists(attngen._library_path))


if __name__ == "__main__":
    unittest.main()
