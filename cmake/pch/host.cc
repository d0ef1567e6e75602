// The one source of the targets that build the precompiled headers (cmake/pch.cmake).
