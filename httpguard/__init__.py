"""What every HTTP server ocrserve runs on this machine checks before routing a request.

Standard library only: both `app` (the jobs API) and `engine.server` (the engine)
import it, and neither may import the other.
"""
