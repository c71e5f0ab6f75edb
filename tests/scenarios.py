# Temporary, during parallel work only: import tests.helpers.scenarios instead. Removed at integration.
from tests.helpers.scenarios import *  # noqa: F403
