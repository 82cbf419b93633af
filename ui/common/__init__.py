"""What every feature of the UI shares: the theme, tables, stored text made safe, the IU graph
component and its layout, the routes between pages (``nav``), deep links, the frame, the shared
resources (the store, static files, providers), question labels and downloads. It imports no
feature package."""
