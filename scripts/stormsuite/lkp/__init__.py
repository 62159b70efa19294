"""The storms as lkp-tests programs: storm lkp install writes each
program from the registry and the module's own parameters (modparams).
"""
