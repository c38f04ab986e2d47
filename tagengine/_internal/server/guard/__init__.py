"""Who may use the server and from where: the Host and Origin checks, the API key, the pages' sign-in sessions."""
