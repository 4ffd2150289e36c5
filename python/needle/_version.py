__version__ = "0.1.0"  # the engine project version (CMakeLists.txt); a test keeps them equal
