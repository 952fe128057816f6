"""--device and --dtype, shared by the commands that load models."""
DEFAULT_DEVICE_TEXT = "cpu"
DEFAULT_DTYPE_TEXT = "float32"


def add_placement(parser):
    """--device and --dtype (checked where they are used, so the parser needs no torch)."""
    parser.add_argument("--device", default=DEFAULT_DEVICE_TEXT, help="where models run: auto (cuda when there is "
                                                                      "one), cpu (default), cuda or cuda:N")
    parser.add_argument("--dtype", default=DEFAULT_DTYPE_TEXT, help="float32 (default) or bfloat16 (autocast)")
