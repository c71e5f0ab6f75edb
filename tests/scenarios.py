# Temporary, during parallel work only: import tests.helpers.scenarios instead. Removed at integration.
import tests.helpers.scenarios as _helpers

globals().update({k: v for k, v in vars(_helpers).items() if not k.startswith("__")})
