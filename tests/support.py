# Temporary, during parallel work only: import tests.helpers.cluster instead. Removed at integration.
from tests.helpers.cluster import *  # noqa: F403
