"""nbgrader in a student's server on the course hub (instructor/hub/jupyterhub_config.py sets JUPYTER_CONFIG_PATH here)."""

import os

from nbgrader.auth import JupyterHubAuthPlugin

c = get_config()  # noqa: F821 (nbgrader provides get_config)

# the course's exchange folder, which the hub passes on (c.Exchange.root of the course's nbgrader_config.py)
c.Exchange.root = os.environ["COURSE_EXCHANGE"]
# a student sees the courses whose hub group nbgrader-<course> they are in, and fetches and submits only there
c.Authenticator.plugin_class = JupyterHubAuthPlugin
