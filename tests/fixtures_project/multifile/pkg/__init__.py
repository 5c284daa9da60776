from .models import Net as PublicNet  # re-exported: `from pkg import PublicNet`
