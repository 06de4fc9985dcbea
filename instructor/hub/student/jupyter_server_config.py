"""A student's Jupyter server on the course hub: nbgrader's assignment list, none of the instructors' tools."""

c = get_config()  # noqa: F821 (Jupyter provides get_config)

c.ServerApp.jpserver_extensions.update(
    {
        "nbgrader.server_extensions.assignment_list": True,
        "nbgrader.server_extensions.validate_assignment": True,
        "nbgrader.server_extensions.formgrader": False,
        "nbgrader.server_extensions.course_list": False,
    }
)
