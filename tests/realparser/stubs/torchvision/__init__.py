"""Stub torchvision: PyPI's torchvision does not import beside the CPU torch 2.13.0 used here.
Why that is safe for the parser path: ../../envs.yaml, "stubs"."""
from _realparser_placeholder import module_getattr, stub_package

__version__ = "0.0.0+stub"
__getattr__ = module_getattr(__name__)
stub_package(__name__)
