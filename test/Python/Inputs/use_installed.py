"""Imports the installed package (run from outside the source tree)."""
import attngen

print(attngen.__file__)
print(attngen.compile(arch="sm_80", head_dim=64).kernel_name)
