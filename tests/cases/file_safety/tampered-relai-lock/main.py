print('the project itself')
