"""Package discovery: ``models/``, ``heuristics/`` and ``solver/`` live at the repository's
top level (the design card) but install inside the ``republish`` namespace. Every
subpackage is found here, so adding one needs no hand-kept list."""

from setuptools import find_packages, setup

ROOTS = {"republish": "republish", "republish.models": "models",
         "republish.heuristics": "heuristics", "republish.solver": "solver"}
packages = []
package_dir = {}
for name, folder in ROOTS.items():
    packages.append(name)
    package_dir[name] = folder
    for sub in find_packages(folder):
        packages.append(f"{name}.{sub}")
        package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"

setup(packages=packages, package_dir=package_dir)
